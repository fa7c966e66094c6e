# The smallest run: print something and return a value from the final expression.
import statistics

numbers = [3, 1, 4, 1, 5, 9, 2, 6]
print(f"hello from codeact: mean={statistics.mean(numbers)}")
sorted(numbers)
