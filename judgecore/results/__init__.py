"""What one answer means: its status and usage, its classification, a batch result line, its verdict, and its item's output line."""
