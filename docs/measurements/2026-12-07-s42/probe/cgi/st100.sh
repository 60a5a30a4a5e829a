#!/bin/sh
printf 'Status: 100 Continue\r\nContent-Type: text/plain\r\n\r\nx\n'
