#!/bin/sh
printf 'Status: 418 Teapot\r\nContent-Type: text/plain\r\n\r\nteapot\n'
