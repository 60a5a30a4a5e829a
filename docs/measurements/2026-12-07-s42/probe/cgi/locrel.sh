#!/bin/sh
printf 'Location: index.html\r\n\r\n'
