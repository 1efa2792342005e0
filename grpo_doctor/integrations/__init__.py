"""Integrations with training frameworks. Each lives in its own module and imports its
framework only when that module is imported, so ``import grpo_doctor`` never needs them:

* ``grpo_doctor.integrations.trl``: ``DoctorCallback``, a Hugging Face ``TrainerCallback`` for
  ``transformers.Trainer`` and the TRL trainers built on it. Needs the ``trl`` extra
  (transformers and accelerate; torch, CPU or CUDA, is the user's to install first): from a
  clone ``pip install -e ".[trl]"``; see docs/watch.md, "Installing the trl extra".
"""
