// The reader the README's NodejsFunction examples bundle (test/apps: the Python and Java CDK app tests).
export const handler = async () => ({ table: process.env.PROMPT_SERVING_TABLE_NAME });
