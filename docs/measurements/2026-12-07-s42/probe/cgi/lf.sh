#!/bin/sh
printf 'Content-Type: text/plain\nX-LF: yes\n\nlfbody\n'
