tbench decomp --params ranks=4
