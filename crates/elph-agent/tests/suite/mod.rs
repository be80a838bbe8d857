mod tools;
