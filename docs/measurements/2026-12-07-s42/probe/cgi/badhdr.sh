#!/bin/sh
printf 'This is not a header\r\n\r\nbody\n'
