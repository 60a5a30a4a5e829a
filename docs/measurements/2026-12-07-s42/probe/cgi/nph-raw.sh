#!/bin/sh
printf 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nnph body\n'
