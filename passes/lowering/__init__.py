"""passes/lowering"""
