"""The README's construct examples, synthesized from a Python CDK app.

Each example (readme_examples.py, generated from jsii-rosetta's Python translations) runs in a fresh stack with
the construct installed from its wheel; the stack is checked on the same intents as the TypeScript tests and
with cdk-nag's AwsSolutions pack, and its template is written for cfn-lint when PROMPT_SERVING_TEMPLATE_DIR is set.
Run from test/apps (the examples' relative paths resolve there): see scripts/test-python-app.sh.
"""
import inspect
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from aws_cdk import Acknowledgment, App, Environment, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks
from cdk_prompt_serving import PromptServingTable

import readme_examples

ENV = Environment(account="123456789012", region="eu-west-1")
READ_ACTIONS = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"]
SYNC_ACTIONS = READ_ACTIONS + ["dynamodb:Scan", "dynamodb:PutItem", "dynamodb:UpdateItem"]
BASIC_ROLE = "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]"
VPC_ROLE = "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]"
PYTHON_READER = "\n".join([
    "import os",
    "",
    "def handler(event, context):",
    "    return os.environ['PROMPT_SERVING_TABLE_NAME']",
    "",
])


def app_acknowledge(construct: Any, *ids: str) -> None:
    """Acknowledge findings on the app's own resources (never the construct's), each with its reason."""
    reasons = {
        BASIC_ROLE: "the app's own test function keeps Lambda's managed logging policy, as most apps do",
        VPC_ROLE: "the app's own test function in the VPC keeps Lambda's managed network-interface policy",
        "AwsSolutions-VPC7": "the app's own test VPC has no NAT and carries no traffic worth flow logs in a synth test",
        "AwsSolutions-L1": "the app's own test function pins a runtime so the template does not change with CDK releases",
    }
    Validations.of(construct).acknowledge(*[Acknowledgment(id=rule, reason=reasons[rule]) for rule in ids])


def given(stack: Stack, name: str, made: Dict[str, Any]) -> Any:
    """What an example declares (`declare const vpc: ec2.IVpc;`), made the way an app would make it."""
    if name in made:
        return made[name]
    if name == "vpc":
        value: Any = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0, subnet_configuration=[
            ec2.SubnetConfiguration(name="isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)])
        app_acknowledge(value, "AwsSolutions-VPC7")
    elif name in ("handler", "fn"):
        # A Python reader: the function add_reader wires (in the VPC when the example declares one).
        vpc = given(stack, "vpc", made) if name == "handler" else None
        value = lambda_.Function(stack, "Reader", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                                 code=lambda_.Code.from_inline(PYTHON_READER), vpc=vpc)
        app_acknowledge(value, BASIC_ROLE, "AwsSolutions-L1", *([VPC_ROLE] if vpc else []))
    elif name == "pager":
        value = sns.Topic(stack, "Pager", enforce_ssl=True, master_key=kms.Alias.from_alias_name(stack, "SnsKey", "alias/aws/sns"))
    elif name == "key":
        value = kms.Key(stack, "Key", enable_key_rotation=True)
    elif name == "role":
        value = iam.Role(stack, "ReaderRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    elif name == "gate":
        # The activation gate (README "Release a change"): any function answering { allow, reason }.
        value = lambda_.Function(stack, "Gate", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                                 code=lambda_.Code.from_inline("def handler(event, context):\n    return {'allow': True, 'reason': 'ok'}\n"))
    elif name == "alarm":
        value = cloudwatch.Alarm(stack, "CheckoutErrors", metric=cloudwatch.Metric(namespace="Shop", metric_name="Errors"),
                                 threshold=1, evaluation_periods=1)
    elif name == "pipeline":
        value = iam.Role(stack, "Pipeline", assumed_by=iam.AccountRootPrincipal())
    else:
        raise AssertionError(f"an example declares {name!r}: teach given() how an app makes one")
    made[name] = value
    return value


def synth(example: Callable[..., None]) -> Tuple[App, Stack, Template]:
    """Runs `example` in a fresh stack (fixed account and Region), returns the app, the stack and its template."""
    app = App()
    stack = Stack(app, "Stack", env=ENV)
    made: Dict[str, Any] = {}
    params = [p for p in inspect.signature(example).parameters if p != "self"]
    example(stack, **{name: given(stack, name, made) for name in params})
    # The example's own NodejsFunction (`Inference`, `CachedReader`) is the app's, not the construct's.
    for child in stack.node.children:
        if isinstance(child, lambda_.Function) and child.node.id not in ("Reader",):
            app_acknowledge(child, BASIC_ROLE, "AwsSolutions-L1", *([VPC_ROLE] if child.is_bound_to_vpc else []))
    template = Template.from_stack(stack)
    out = os.environ.get("PROMPT_SERVING_TEMPLATE_DIR")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        Path(out, f"python-{example.__name__}.template.json").write_text(json.dumps(template.to_json(), indent=1))
    return app, stack, template


def resources(template: Template, kind: str) -> List[Dict[str, Any]]:
    return list(template.find_resources(kind).values())


def policy_statements(template: Template, role_prefix: str) -> List[Dict[str, Any]]:
    """The statements of the inline policies attached to the role whose logical id starts with `role_prefix`."""
    statements: List[Dict[str, Any]] = []
    for policy in resources(template, "AWS::IAM::Policy"):
        roles = policy["Properties"].get("Roles", [])
        if any(ref.get("Ref", "").startswith(role_prefix) for ref in roles):
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


@pytest.mark.parametrize("example", readme_examples.EXAMPLES, ids=lambda e: e.__name__)
def test_every_example_synthesizes_with_no_unacknowledged_aws_solutions_finding(example: Callable[..., None]) -> None:
    # GIVEN / WHEN
    app, stack, _ = synth(example)
    report = AwsSolutionsChecks(app).validate_scope(stack)
    # THEN
    findings = [f"{v.rule_name} at {[r.construct_path for r in v.violating_resources]}" for v in report.violations]
    assert findings == []
    assert report.success


def test_bedrock_source_table_keys_recovery_and_sync_permissions() -> None:
    # GIVEN / WHEN
    _, _, template = synth(readme_examples.smallest_deployment)
    # THEN
    template.resource_count_is("AWS::DynamoDB::GlobalTable", 1)
    template.has_resource_properties("AWS::DynamoDB::GlobalTable", {
        "KeySchema": [{"AttributeName": "prompt_id", "KeyType": "HASH"}, {"AttributeName": "version", "KeyType": "RANGE"}],
        "BillingMode": "PAY_PER_REQUEST",
        "Replicas": [Match.object_like({
            "Region": "eu-west-1",
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "DeletionProtectionEnabled": True,
        })],
    })
    template.has_resource("AWS::DynamoDB::GlobalTable", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
    template.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([{
        "Effect": "Allow",
        "Action": SYNC_ACTIONS,
        "Resource": {"Fn::GetAtt": [Match.string_like_regexp("^PromptsTable"), "Arn"]},
    }])}})
    template.has_resource_properties("AWS::IAM::Policy", {
        "PolicyName": Match.string_like_regexp("^PromptsSourceReadPolicy"),
        "PolicyDocument": {"Statement": [
            {"Effect": "Allow", "Action": "bedrock:ListPrompts", "Resource": "*"},
            {"Effect": "Allow", "Action": "bedrock:GetPrompt",
             "Resource": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":bedrock:eu-west-1:123456789012:prompt/*"]]}},
        ]},
    })


def test_bedrock_source_scoped_to_prompt_ids() -> None:
    # GIVEN / WHEN
    _, _, template = synth(readme_examples.only_some_bedrock_prompts_or_their_drafts)
    # THEN
    def arn(suffix: str) -> Dict[str, Any]:
        return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":bedrock:eu-west-1:123456789012:prompt/{suffix}"]]}
    template.has_resource_properties("AWS::IAM::Policy", {
        "PolicyName": Match.string_like_regexp("^PromptsSourceReadPolicy"),
        "PolicyDocument": {"Statement": [
            {"Effect": "Allow", "Action": "bedrock:ListPrompts", "Resource": "*"},
            {"Effect": "Allow", "Action": "bedrock:GetPrompt",
             "Resource": [arn("PROMPT0001"), arn("PROMPT0001:*"), arn("PROMPT0002"), arn("PROMPT0002:*")]},
        ]},
    })


def test_reader_function_gets_exactly_the_read_actions_and_the_table_name() -> None:
    # GIVEN / WHEN
    _, _, template = synth(readme_examples.smallest_deployment_2)
    # THEN
    table_id = next(iter(template.find_resources("AWS::DynamoDB::GlobalTable")))
    readers = [fn for logical_id, fn in template.find_resources("AWS::Lambda::Function").items() if logical_id.startswith("Inference")]
    assert len(readers) == 1
    assert readers[0]["Properties"]["Environment"]["Variables"] == {"PROMPT_SERVING_TABLE_NAME": {"Ref": table_id}}
    statements = policy_statements(template, "InferenceServiceRole")
    assert [s["Action"] for s in statements] == [READ_ACTIONS]
    resource = statements[0]["Resource"]
    assert {"Fn::GetAtt": [table_id, "Arn"]} in (resource if isinstance(resource, list) else [resource])


def test_directory_source_deploys_the_prompt_files_through_the_sync() -> None:
    # GIVEN / WHEN
    _, _, template = synth(readme_examples.prompts_as_code)
    # THEN
    syncs = resources(template, "Custom::PromptSync")
    assert len(syncs) == 1
    assert syncs[0]["Properties"]["ContentFingerprint"]
    # A directory source reads no Bedrock prompts: no bedrock:* permission anywhere.
    statements = [s for p in resources(template, "AWS::IAM::Policy") for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert [s for s in statements if "bedrock:" in json.dumps(s["Action"])] == []


def test_cache_tier_reader_is_a_python_function_in_the_vpc_with_the_cache_environment() -> None:
    # GIVEN / WHEN
    _, _, template = synth(readme_examples.cache_tier_elasticache_for_valkey)
    # THEN
    template.resource_count_is("AWS::ElastiCache::ServerlessCache", 1)
    table_id = next(iter(template.find_resources("AWS::DynamoDB::GlobalTable")))
    cache_id = next(iter(template.find_resources("AWS::ElastiCache::ServerlessCache")))
    reader = template.find_resources("AWS::Lambda::Function", {"Properties": {"Handler": "index.handler", "Runtime": "python3.13"}})
    assert len(reader) == 1
    props = next(iter(reader.values()))["Properties"]
    assert props["VpcConfig"]["SubnetIds"]
    variables = props["Environment"]["Variables"]
    assert variables["PROMPT_SERVING_TABLE_NAME"] == {"Ref": table_id}
    assert variables["PROMPT_SERVING_CACHE_ENDPOINT"] == {"Fn::Join": ["", [
        {"Fn::GetAtt": [cache_id, "Endpoint.Address"]}, ":", {"Fn::GetAtt": [cache_id, "Endpoint.Port"]}]]}
    assert variables["PROMPT_SERVING_CACHE_TLS"] == "true"
    assert variables["PROMPT_SERVING_CACHE_AUTH"] == "iam"
    actions = [s["Action"] for s in policy_statements(template, "ReaderServiceRole")]
    assert "elasticache:Connect" in actions
    assert READ_ACTIONS in actions
    template.has_resource_properties("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Gateway"})


def test_imported_table_reader_is_granted_that_table_by_arn() -> None:
    # GIVEN / WHEN
    _, _, template = synth(readme_examples.readers_in_another_stack_app_or_account)
    # THEN
    template.resource_count_is("AWS::DynamoDB::GlobalTable", 0)
    template.resource_count_is("AWS::DynamoDB::Table", 0)
    table_arn = {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":dynamodb:eu-west-1:123456789012:table/prompts-prod"]]}
    statements = policy_statements(template, "InferenceServiceRole")
    assert [s["Action"] for s in statements] == [READ_ACTIONS]
    assert table_arn in (statements[0]["Resource"] if isinstance(statements[0]["Resource"], list) else [statements[0]["Resource"]])
    template.has_resource_properties("AWS::Lambda::Function", {
        "Environment": {"Variables": {"PROMPT_SERVING_TABLE_NAME": "prompts-prod"}},
    })


def test_replicas_in_each_region_next_to_the_primary() -> None:
    # GIVEN / WHEN
    _, _, template = synth(readme_examples.multi_region)
    # THEN
    table = resources(template, "AWS::DynamoDB::GlobalTable")[0]["Properties"]
    assert table["TableName"] == "prompts-prod"
    assert sorted(r["Region"] for r in table["Replicas"]) == ["ap-southeast-2", "eu-west-1", "us-east-1"]
    for replica in table["Replicas"]:
        assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_customer_managed_key_and_provisioned_billing() -> None:
    # GIVEN / WHEN
    _, _, template = synth(readme_examples.encryption_billing_and_retention)
    # THEN
    table = resources(template, "AWS::DynamoDB::GlobalTable")[0]
    assert table["Properties"]["BillingMode"] == "PROVISIONED"
    assert table["Properties"]["SSESpecification"]["SSEType"] == "KMS"
    assert table["DeletionPolicy"] == "Delete"


def test_the_examples_use_the_construct_from_the_wheel() -> None:
    # The construct's module is the installed distribution, not a source tree.
    import cdk_prompt_serving

    assert "site-packages" in cdk_prompt_serving.__file__
    assert PromptServingTable.__module__.startswith("cdk_prompt_serving")


def test_cdk_nag_still_reports_a_wildcard_added_to_the_construct_later() -> None:
    # GIVEN
    app, stack, _ = synth(readme_examples.smallest_deployment)
    prompts = stack.node.find_child("Prompts")
    assert isinstance(prompts, PromptServingTable)
    # WHEN
    prompts.sync_function.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    report = AwsSolutionsChecks(app).validate_scope(stack)
    # THEN
    assert [v.rule_name for v in report.violations] == ["AwsSolutions-IAM5[Resource::*]"]
