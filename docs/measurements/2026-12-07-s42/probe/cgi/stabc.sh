#!/bin/sh
printf 'Status: abc\r\nContent-Type: text/plain\r\n\r\nx\n'
