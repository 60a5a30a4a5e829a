notexec
