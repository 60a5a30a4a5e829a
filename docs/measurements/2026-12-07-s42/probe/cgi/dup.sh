#!/bin/sh
printf 'Content-Type: text/plain\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nhello\n'
