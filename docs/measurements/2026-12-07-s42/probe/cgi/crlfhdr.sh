#!/bin/sh
printf 'Content-Type: text/plain\r\nX-A: a\rb\r\n\r\nx\n'
