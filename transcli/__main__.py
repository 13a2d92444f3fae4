from transcli.cli import main

main()
