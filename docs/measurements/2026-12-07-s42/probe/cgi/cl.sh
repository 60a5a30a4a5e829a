#!/bin/sh
printf 'Content-Type: text/plain\r\nContent-Length: 100\r\n\r\nshort\n'
