"""Generator of a corpus of real (tiny, CPU) GRPO training runs for grpo-doctor's tests.

Not part of the installed package and not run in CI: see corpus/README.md.
"""
