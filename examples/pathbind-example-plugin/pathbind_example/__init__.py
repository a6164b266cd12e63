"""Example PathBind plugin: which stain dominates a tile?"""
