"""Tool-integrated GRPO on the corpus's tiny task (trial 41): a policy that can call a lookup
tool, multi-turn rollouts with tool output masked from the loss (or not), written under the
names of verl multi-turn, TRL's tools, NeMo-RL, Search-R1 and VerlTool. Not run in CI."""
