//! Knowledge base: chunks, their DynamoDB store and the version marker. (in progress)
