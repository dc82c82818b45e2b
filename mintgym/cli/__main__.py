from mintgym.cli import main

main()
