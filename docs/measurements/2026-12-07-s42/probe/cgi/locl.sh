#!/bin/sh
printf 'Location: /cgi-bin/env.sh/redirected?q=1\r\n\r\n'
