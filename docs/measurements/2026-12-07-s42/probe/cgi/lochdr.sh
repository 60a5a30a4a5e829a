#!/bin/sh
printf 'Status: 200 OK\r\nLocation: /index.html\r\n\r\n'
