#!/bin/sh
# child keeps stdout open
sleep 20 &
printf 'Content-Type: text/plain\r\n\r\nparent done\n'
