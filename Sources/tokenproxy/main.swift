print("tokenproxy")
