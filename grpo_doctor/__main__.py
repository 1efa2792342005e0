from grpo_doctor.cli import main

main()
