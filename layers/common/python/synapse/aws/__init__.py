"""AWS adapters other than DynamoDB: botocore clients (and the item parser), EventBridge, KMS."""
