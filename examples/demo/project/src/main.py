print("hello from the demo project")
