#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
echo "CL=$CONTENT_LENGTH"; md5sum | cut -d' ' -f1
