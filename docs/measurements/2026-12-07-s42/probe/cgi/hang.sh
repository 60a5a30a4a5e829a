#!/bin/sh
sleep 30
