# A word that is not a subcommand is named as such, with the usage exit code.
tdecomp foo
