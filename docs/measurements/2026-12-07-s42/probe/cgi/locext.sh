#!/bin/sh
printf 'Location: http://evil.example/\r\n\r\n'
