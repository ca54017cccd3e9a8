# With no file and stdin a terminal, tinfo explains instead of waiting for input (run
# under a pseudo-terminal with `script`, whose -e passes the exit status on).
script -qec "tinfo" /dev/null | tr -d '\r'
