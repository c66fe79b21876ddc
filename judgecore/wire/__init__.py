"""What goes on the wire: requests (without their messages), the bytes of a create body, structured-output schemas, sub-batch chunks, the model table."""
