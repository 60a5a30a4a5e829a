#!/bin/sh
printf 'Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\nhello\n'
