"""What the user asked to judge: items, their custom_ids and id sets, the columns they are held in, judge designs and how their answers fold back."""
