"""judgecore: the pure decision core."""
