#!/bin/sh
printf 'Status: 999 Weird\r\nContent-Type: text/plain\r\n\r\nx\n'
