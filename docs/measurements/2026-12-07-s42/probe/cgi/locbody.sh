#!/bin/sh
printf 'Location: /index.html\r\nContent-Type: text/plain\r\n\r\nhas body\n'
