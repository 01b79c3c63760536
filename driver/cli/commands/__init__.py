"""Subcommands of the `vdla` CLI: one module each, with add_parser(sub) and run(args)."""
