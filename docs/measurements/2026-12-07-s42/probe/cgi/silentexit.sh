#!/bin/sh
# child holds stdout; parent exits at once
sleep 20 &
printf 'Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nfull\n'
exit 0
