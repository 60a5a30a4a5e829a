#!/bin/sh
printf 'Location: /cgi-bin/locloop.sh\r\n\r\n'
