"""Sources reached over the network: W&B cloud runs fetched into a local cache
(``wandb_api``), which the file importers then read.
"""
