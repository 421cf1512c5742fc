"""dlc's user commands: the `dlc` CLI and its subcommands, `dlc-opt`, and what only they share.

One module per command (`dlc_cli` with its subcommand modules: `bisect`, `explore`, `export`,
`profile_cli`, `tune_cli`; `dlc_opt` with `opt_guards`), plus the command-line helpers they
share (`cli_args`: argument parsing, input loading; `progress`: the progress display).

What does not belong here: anything the library needs (the library never imports
`dlc.tools`, tests/test_structure.py checks), the QA harnesses (fuzzers, the conformance runner:
`dlc.testing`, which `dlc fuzz` and `dlc conformance` call), benchmarks and examples.
"""
