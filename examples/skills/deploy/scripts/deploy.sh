#!/bin/sh
echo "deploying to $1"
echo "https://staging.example.org"
