#!/bin/sh
printf 'Content-Type : text/plain\r\n\r\nx\n'
