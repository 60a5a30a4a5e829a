#!/bin/sh
printf 'just body\n'
