#!/bin/sh
printf 'Status: 304 Not Modified\r\n\r\nbody-on-304\n'
