#!/bin/sh
printf 'Content-Type: text/plain\r\nConnection: close\r\nKeep-Alive: timeout=1\r\nUpgrade: foo\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nx\n'
