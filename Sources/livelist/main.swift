print("livelist")
