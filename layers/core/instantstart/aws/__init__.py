"""AWS access: boto3 client factory, EKS bearer tokens."""
