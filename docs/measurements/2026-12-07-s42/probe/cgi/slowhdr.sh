#!/bin/sh
sleep 8
printf 'Content-Type: text/plain\r\n\r\nlate\n'
