#!/bin/sh
printf 'Status: 204 No Content\r\nContent-Type: text/plain\r\n\r\nbody-on-204\n'
