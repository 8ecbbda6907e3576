"""What several test files share: paths, plan builders, enumerators and the office tools. No tests here.

Test files import these modules (`from tests.helpers.small_plans import plan, write`), never each other.
"""
