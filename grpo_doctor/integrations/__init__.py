"""Integrations with training frameworks. Each lives in its own module and imports its
framework only when that module is imported, so ``import grpo_doctor`` never needs them:

* ``grpo_doctor.integrations.trl``: ``DoctorCallback``, a Hugging Face ``TrainerCallback`` for
  ``transformers.Trainer`` and the TRL trainers built on it (``pip install 'grpo-doctor[trl]'``).
"""
