# attack: SystemExit with a string (message on stderr, exit code 1, as python does)
# expect: ok
raise SystemExit("bye from the snippet")
